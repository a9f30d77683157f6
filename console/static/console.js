// Treasury console: the journal entry form's balance check, in the
// browser. A help only: the server's ledger rules decide. Without script
// the form still posts, and an unbalanced entry is refused there.
(function () {
  'use strict';
  function cents(text) {
    var s = text.replace(/[$,\s]/g, '');
    if (s === '') return 0;
    if (!/^\d+(\.\d{0,2})?$|^\.\d{1,2}$/.test(s)) return NaN;
    var parts = s.split('.');
    var frac = ((parts[1] || '') + '00').slice(0, 2);
    return Number(parts[0] || '0') * 100 + Number(frac);
  }
  function dollars(c) {
    return '$' + (c / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  function check(form) {
    var debit = 0, credit = 0, lines = 0, bad = false;
    form.querySelectorAll('[data-amount]').forEach(function (input) {
      var c = cents(input.value);
      if (isNaN(c)) { bad = true; return; }
      if (c === 0) return;
      lines++;
      var direction = form.querySelector('[name="' + input.name.replace('amount_', 'direction_') + '"]').value;
      if (direction === 'debit') debit += c; else credit += c;
    });
    var status = form.querySelector('[data-balance-status]');
    var ok = !bad && lines >= 2 && debit === credit;
    if (bad) status.textContent = 'An amount is not dollars and cents.';
    else if (lines < 2) status.textContent = 'A journal entry needs at least two lines.';
    else if (debit !== credit) status.textContent = 'Debits ' + dollars(debit) + ', credits ' + dollars(credit) + ': off by ' + dollars(Math.abs(debit - credit)) + '.';
    else status.textContent = 'Balanced: ' + dollars(debit) + ' each way.';
    form.querySelector('button[type="submit"]').disabled = !ok;
    form.dataset.balanced = ok ? 'true' : 'false';
  }
  function init(root) {
    root.querySelectorAll('form[data-balance-check]').forEach(function (form) {
      form.addEventListener('input', function () { check(form); });
      form.addEventListener('change', function () { check(form); });
      check(form);
    });
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', function () { init(document); });
  else init(document);
})();

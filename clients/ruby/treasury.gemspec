# frozen_string_literal: true

require_relative "lib/treasury/version"

Gem::Specification.new do |spec|
  spec.name = "treasury"
  spec.version = Treasury::VERSION
  spec.authors = ["OpenTreasury"]
  spec.summary = "Ruby client of the Treasury API: virtual accounts, payments, KYB, ledger, webhooks."
  spec.license = "MIT"
  spec.description = <<~DESC
    The Ruby client of the Treasury embedded-treasury API: platforms, virtual accounts, payments over
    ACH, RTP and FedNow, book transfers between a platform's accounts, KYB, the double-entry ledger,
    webhooks (with signature verification) and events. Retries with idempotency keys, pagination that
    walks every page, one error class per status. Standard library only.
  DESC
  spec.homepage = "https://github.com/opentreasury/treasury"
  spec.required_ruby_version = ">= 3.1"

  spec.files = Dir["lib/**/*.rb"] + ["README.md", "treasury.gemspec"]
  spec.require_paths = ["lib"]

  spec.metadata = {
    "source_code_uri" => "https://github.com/opentreasury/treasury/tree/main/clients/ruby",
    "rubygems_mfa_required" => "true"
  }
  # No runtime dependencies: net/http, json, openssl, securerandom and time are Ruby's own.
end

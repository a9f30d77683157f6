package eventstore

import "fmt"

// WriterGate is the advisory lock every command holds shared for its whole
// transaction (see CommandBegin). A rebuild takes it exclusively for the
// moment it swaps its shadow tables in, so that no command writes the live
// projections or appends an event meanwhile.
const WriterGate = 0x7472_6561_7375_7279 // "treasury"

// TakeWriterGateShared takes the writer gate shared until the end of the
// transaction: a command's second statement, after its BEGIN.
var TakeWriterGateShared = fmt.Sprintf("SELECT pg_advisory_xact_lock_shared(%d)", WriterGate)

// CommandBegin begins a command's transaction and takes the writer gate
// shared in the same round trip (pgx sends it as one simple query).
var CommandBegin = "BEGIN ISOLATION LEVEL READ COMMITTED; " + TakeWriterGateShared

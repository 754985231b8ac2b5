"""What N `interlock serve` replicas share through one PostgreSQL (docs/fleet.md).

- :mod:`interlock.hosts.fleet.shared`: the connection, the tables and the
  LISTEN/NOTIFY listener every shared piece uses;
- :mod:`interlock.hosts.fleet.state`: tokens, breaker state, rate-limit buckets and
  the revision history on top of it.

Audit records and dead letters need nothing here: every replica writes them
to the same PostgreSQL store (interlock.store).
"""

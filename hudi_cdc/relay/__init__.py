"""The snapshot relay: a resumable initial snapshot handed over to the binlog from the FIRST position.

ledger.py (pure values and rules) <- store.py (Hadoop FS) <- markers.py / source.py / observe.py
(Kafka, the source, Hudi, Connect) <- actions.py (start / resume / finish, the only sequencer).
"""

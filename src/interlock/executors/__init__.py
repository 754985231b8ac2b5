"""Executors: how out-of-process hooks (command, worker, http, ...) are run."""

"""The metadata store: links, offset maps and mirror runs. No SQL anywhere else.

SQLAlchemy Core over SQLite by default; any SQLAlchemy URL (e.g. PostgreSQL) works
the same. Only the driver side of kmigrate talks to the store, never Spark executors.
The store persists the values of :mod:`kmigrate.model` and imports no domain package.
"""

from kmigrate.store.database import Store, open_store, store_for

__all__ = ["Store", "open_store", "store_for"]

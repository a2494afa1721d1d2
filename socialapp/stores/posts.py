"""Placeholder, replaced by the real store."""


class PostStore:
    def __init__(self, db, settings) -> None:
        self._db = db

    def ensure_indexes(self) -> None:
        pass

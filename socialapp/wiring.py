"""The one place that builds every store and shares it with the API and the workers."""

from __future__ import annotations

import dataclasses

from socialapp.config import Settings
from socialapp.domain.ids import IdGenerator
from socialapp.security import Passwords, Tokens
from socialapp.stores import mongo
from socialapp.stores.follows import FollowStore
from socialapp.stores.likes import LikeStore
from socialapp.stores.posts import PostStore
from socialapp.stores.users import UserStore


@dataclasses.dataclass
class Components:
    settings: Settings
    db: object
    ids: IdGenerator
    passwords: Passwords
    tokens: Tokens
    users: UserStore
    follows: FollowStore
    posts: PostStore
    likes: LikeStore

    def ensure_indexes(self) -> None:
        for store in (self.users, self.follows, self.posts, self.likes):
            store.ensure_indexes()


def build(settings: Settings) -> Components:
    db = mongo.connect(settings)
    return Components(
        settings=settings,
        db=db,
        ids=IdGenerator(),
        passwords=Passwords(settings),
        tokens=Tokens(settings),
        users=UserStore(db, settings),
        follows=FollowStore(db, settings),
        posts=PostStore(db, settings),
        likes=LikeStore(db, settings),
    )

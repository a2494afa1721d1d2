"""The avatar and header images every account points at (``/avatars/original/missing.png``,
``/headers/original/missing.png``), as Mastodon serves its "missing" images: accounts here
upload none. Drawn once at import as plain PNGs, cached by clients for a day."""

from __future__ import annotations

import struct
import zlib

from flask import Blueprint, Response

from socialapp.api.mastodon import entities
from socialapp.api.mastodon.openapi import documented

blp = Blueprint("mastodon_images", __name__)


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A PNG of one colour (8-bit RGB, no interlace)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(row * height, 9)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


AVATAR = png(400, 400, (156, 163, 175))
HEADER = png(1500, 500, (209, 213, 219))


def _image(data: bytes) -> Response:
    response = Response(data, mimetype="image/png")
    response.headers["Cache-Control"] = "public, max-age=86400"
    return response


@blp.get(entities.MISSING_AVATAR)
@documented("The avatar of every account (PNG)", "A PNG image", media="image/png")
def avatar():
    return _image(AVATAR)


@blp.get(entities.MISSING_HEADER)
@documented("The header image of every account (PNG)", "A PNG image", media="image/png")
def header():
    return _image(HEADER)

"""THE patch palette: one colour per patch, the same in every picture, page and report.

Hues a golden angle apart (so that patches next to each other in the table, which are the
ones a reader compares, differ most) at three lightness and three saturation steps. Chosen
over matplotlib's tab20/tab20b (the report's former palette) because it is distinct for
any number of patches (tab20 + tab20b has 40 colours, and its pairs of light and dark of
one hue sit side by side), needs no plotting library at this low layer, and is what the
web app already showed, so a quilt looks the same in the browser and in the report.
"""

from __future__ import annotations

import colorsys
import zlib

GOLDEN = 0.618033988749895
LIGHTNESS = (0.62, 0.48, 0.72)
SATURATION = (0.62, 0.55, 0.5)


def patch_index(patch: int | str) -> int:
    """The palette index of a patch: its position in the table, or for an id the number
    in it ('P07' -> 7, the shipped rulesets number patches by position), or for an id
    without digits a stable checksum of it."""
    if isinstance(patch, int):
        if patch < 0:
            raise ValueError(f"a patch index is 0 or more, not {patch}")
        return patch
    digits = "".join(ch for ch in str(patch) if ch.isdigit())
    return int(digits) if digits else zlib.crc32(str(patch).encode("utf-8"))


def patch_colour(patch: int | str) -> str:
    """'#rrggbb' for a patch (its index in the ruleset's table, or its id)."""
    i = patch_index(patch)
    hue = (i * GOLDEN) % 1.0
    r, g, b = colorsys.hls_to_rgb(hue, LIGHTNESS[i % 3], SATURATION[(i // 3) % 3])
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def patch_colours(patch_ids: list[str]) -> dict[str, str]:
    """A colour per patch of a table, by position (all different within the table)."""
    return {pid: patch_colour(i) for i, pid in enumerate(patch_ids)}

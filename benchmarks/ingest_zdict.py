"""Raw-record codecs: build a token list + preset dictionary, and print what each codec saves.

    python -m benchmarks.ingest_zdict [--games 600] [--seed 7] [--write-dir DIR] [--test N]

Prints, per game, the mean canonical record size and the stored size with plain deflate, with
every shipped codec and with a freshly built one (microseconds per record too), measured on
simulated games of another seed than the ones the dictionary is built from. A dictionary is the
last 32 KiB of shuffled canonical records with the tokens substituted (what beat
frequent-substring dictionaries here). Shipped files are frozen: --write-dir writes new files
for NEW codec ids in ingest/storage/codec.py, never replacements.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from pathlib import Path

import orjson

from ingest.storage import codec

SIZE, LEVEL = 32 * 1024, 9
# The most repeated fragments of canonical records (sorted keys, compact), longest first.
TOKENS = {
    "slow6": [
        '"]},{"moves":["', '"},{"moves":["', ',"game":"slow6","game_id":"',
        '"client":{"platform":"', '"result":{"points":[', '},"schema":1,"turns":[',
        '},"rules":{"board":', '","target":["', '"],"power":"', ',{"moves":[]}',
        '","lineups":[[', '","target":"', '{"moves":[]}', '{"moves":["', '"challenge":',
        '","version":"', '"ended_at":"', '],"reason":"', '","winner":', '],"mode":"',
        '","powers":', '","first":', ',"hidden":', ',"powers":', '"]}],"', '"]}', '","',
    ],
    "slide": [
        ']],"slides":[{"side":"', '"rounds":[{"reveals":[[', ']},{"reveals":[[',
        '"},{"side":"', '"}],"takes":[', '{"side":"', "bottom", "right", "left", "top", "],[",
    ],
}  # fmt: skip


def records(game: str, n: int, seed: int) -> list[bytes]:
    if game == "slow6":
        from replays.slow6.simulate import simulate_games

        recs = simulate_games(n, seed=seed, max_level=1)
    else:
        from replays.slide.simulate import simulate_games

        recs = (r for p in range(2, 7) for r in simulate_games(n // 5, p, seed + p))
    return [codec.canonical(r) for r in recs]


def build(game: str, train: list[bytes]) -> dict:
    frags = sorted(TOKENS[game], key=len, reverse=True)
    pairs = tuple((f.encode(), bytes([i + 1])) for i, f in enumerate(frags))
    sample = [codec.substitute(c, pairs) for c in train]
    random.Random(0).shuffle(sample)
    zdict = b"".join(sample)[-SIZE:]
    return {"game": game, "level": LEVEL, "tokens": frags, "zdict": zdict.decode(),
            "built_from": f"{len(train)} simulated canonical records, tokens substituted, "
            f"shuffled: the last {SIZE} bytes"}  # fmt: skip


def measure(encode, test: list[bytes]) -> tuple[float, float]:
    start = time.perf_counter()
    total = sum(len(encode(c)) for c in test)
    return total / len(test), (time.perf_counter() - start) / len(test) * 1e6


def fresh_encoder(spec: dict):
    pairs = tuple((f.encode(), bytes([i + 1])) for i, f in enumerate(spec["tokens"]))
    base = zlib.compressobj(spec["level"], zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY,
                            spec["zdict"].encode())  # fmt: skip

    def encode(c: bytes) -> bytes:
        comp = base.copy()
        return comp.compress(codec.substitute(c, pairs)) + comp.flush()

    return encode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=600)
    ap.add_argument(
        "--seed", type=int, default=7, help="seed of the games a dictionary is built from"
    )
    ap.add_argument("--write-dir", help="write the freshly built files here")
    ap.add_argument("--game", choices=("slow6", "slide"), default=None)
    ap.add_argument("--test", type=int, help="games measured on (default: games/3, at least 100)")
    args = ap.parse_args()
    for game in [args.game] if args.game else ["slow6", "slide"]:
        train = records(game, args.games, args.seed)
        test = records(game, args.test or max(100, args.games // 3), args.seed + 1000)
        spec = build(game, train)
        mean = sum(map(len, test)) / len(test)
        print(f"{game}: {len(test)} test records, canonical JSON {mean:.0f} B")
        rows = [("plain deflate", lambda c: zlib.compress(c, 9)[2:-4])]
        rows += [(f"codec {cid} ({name})", lambda c, cid=cid: codec.encode_with(cid, c))
                 for cid, name in codec.DICTIONARIES.items() if name.startswith(game)]  # fmt: skip
        rows.append(("fresh build", fresh_encoder(spec)))
        for name, encode in rows:
            size, us = measure(encode, test)
            print(f"  {name:22s} {size:7.1f} B/record ({size / mean:5.1%})  {us:6.1f} us/record")
        if args.write_dir:
            out = Path(args.write_dir) / f"{game}-new.json"
            out.write_bytes(orjson.dumps(spec, option=orjson.OPT_INDENT_2) + b"\n")
            print(f"  wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Regenerate the example models shipped in fwcore/data/ (a test checks they match).

    python python/make_example_models.py
"""
from pathlib import Path

import fwcore

DATA = Path(__file__).resolve().parents[1] / "fwcore" / "data"

EXAMPLES = {
    # Barrier FW's grid family: unary [θ_i, −θ_i], θ_i ~ U[−1, 1]; couplings w ~ U[−4, 4]
    "grid5x5.uai": lambda: fwcore.random_grid(5, 5, coupling=4.0, field=1.0, seed=2015),
    # a 10-variable clique with strong mixed couplings (θ = 3), the hard case of Sec. 5
    "clique10.uai": lambda: fwcore.random_clique(10, coupling=3.0, field=1.0, seed=2015),
}


def main():
    DATA.mkdir(exist_ok=True)
    for name, make in EXAMPLES.items():
        fwcore.write_uai(make(), DATA / name)
        print(f"wrote {DATA / name}")


if __name__ == "__main__":
    main()

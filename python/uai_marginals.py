"""Read a UAI model, compute marginals and a log Z bound, write .MAR and .PR answer files.

    python python/uai_marginals.py MODEL.uai [--oracle auto] [--out PREFIX]

The same as `fwcore infer MODEL.uai --out PREFIX`, from Python. With no MODEL, the example
grid shipped in the package is used.
"""
import argparse
from pathlib import Path

import fwcore


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", nargs="?",
                   default=str(Path(fwcore.__file__).parent / "data" / "grid5x5.uai"))
    p.add_argument("--oracle", default="auto",
                   help="auto (exact marginals when cheap, else Barrier FW), exact, trws, ...")
    p.add_argument("--out", default="marginals", help="prefix of the .MAR and .PR files")
    args = p.parse_args(argv)
    model = fwcore.read_uai(args.model)
    res = fwcore.barrier_fw(model, oracle=args.oracle)
    fwcore.write_mar(args.out + ".MAR", res.node_marginals)
    fwcore.write_pr(args.out + ".PR", res.log_z_upper)
    print(f"{args.model}: log Z <= {res.log_z_upper:.6f} "
          f"({'certified' if res.certified else 'not certified'}); "
          f"wrote {args.out}.MAR and {args.out}.PR")


if __name__ == "__main__":
    main()

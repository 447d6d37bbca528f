"""The `treescore` command: `treescore demo` and `treescore score`."""
import argparse
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="treescore", description="LightGBM scoring in Spark, batched natively.")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="score generated data with treescore and with mapInPandas, and compare")
    demo.add_argument("--rows", type=int, default=1_000_000, help="rows to generate (default 1,000,000)")
    demo.add_argument("--features", type=int, default=28, help="features per row (default 28)")
    demo.add_argument("--trees", type=int, default=100, help="boosting rounds (default 100)")
    demo.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")

    run = commands.add_parser("score", help="score a Parquet dataset into a new Parquet dataset")
    run.add_argument("--model", required=True,
                     help="LightGBM text model or MLflow LightGBM model directory: local or Hadoop path")
    run.add_argument("--input", required=True, help="Parquet input path")
    run.add_argument("--output", required=True, help="Parquet output path")
    run.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    run.add_argument("--columns", nargs="+", help="feature columns in model order (default: the model's feature names)")
    run.add_argument("--output-column", default="prediction", help="name of the score column (default prediction)")
    run.add_argument("--mode", default="errorifexists", choices=["errorifexists", "overwrite"],
                     help="what to do if the output exists (default: fail)")
    run.add_argument("--progress-interval", type=float, default=10.0, metavar="SECONDS",
                     help="print rows scored and rows/s to stderr this often (default 10; 0: never)")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from treescore.demo import run_demo

        return run_demo(rows=args.rows, features=args.features, trees=args.trees, master=args.master)
    from treescore.score_job import run_score_job

    return run_score_job(args)


if __name__ == "__main__":
    sys.exit(main())

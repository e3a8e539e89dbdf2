"""``python -m memlane``: the same command line as the ``memlane`` script."""

from memlane.cli import main

if __name__ == "__main__":
    main()

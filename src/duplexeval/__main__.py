"""`python -m duplexeval` runs the command line."""

from duplexeval.cli import main

if __name__ == "__main__":
    main()

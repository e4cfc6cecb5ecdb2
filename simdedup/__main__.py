"""`python -m simdedup` runs the command line."""

from .cli import main

main(prog_name="simdedup")

import sys

try:
    from banditbench.cli import entry
except KeyboardInterrupt:  # Ctrl-C while the command is still starting: nothing has been done yet
    print("interrupted", file=sys.stderr)
    sys.exit(130)

entry()

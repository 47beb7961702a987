import sys

try:
    from banditbench.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command is still starting: nothing has been done yet
    print("interrupted", file=sys.stderr)
    sys.exit(130)

main()

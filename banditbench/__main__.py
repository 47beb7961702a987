import sys

try:
    from banditbench.cli import entry
except KeyboardInterrupt:  # Ctrl-C while the command is still starting: nothing has been done yet
    print("interrupted", file=sys.stderr)
    exec("")  # as banditbench.cli.forget_interrupted_exec, which a cut-off import may not have defined
    sys.exit(130)

entry()

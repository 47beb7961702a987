from banditbench.cli import main

main()

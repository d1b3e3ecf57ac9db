from .cli import entry

entry()  # as the console script: the tuned process (cli.tune_process), then main(argv)

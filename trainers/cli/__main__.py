"""``python -m trainers.cli`` (and ``torchrun ... -m trainers.cli``): the ``rlds-lang`` command line."""

from trainers.cli.main import main

if __name__ == "__main__":
    main()

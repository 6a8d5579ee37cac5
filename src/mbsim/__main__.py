"""``python -m mbsim ...``: the ``mbsim`` command (:func:`mbsim.cli.main.main`)."""

from mbsim.cli.main import main

if __name__ == "__main__":
    main()

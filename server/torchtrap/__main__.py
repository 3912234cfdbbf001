import sys

if sys.argv[1:2] == ["run"]:
    # `torchtrap run` needs none of the linter's rules to start the script:
    # importing them first cost every run 0.4 s of CPU (issue 36, item 11).
    from torchtrap.run.command import main as run_main

    raise SystemExit(run_main(sys.argv[2:]))

from torchtrap.cli import main  # noqa: E402

raise SystemExit(main())

from torchtrap.cli import main

raise SystemExit(main())

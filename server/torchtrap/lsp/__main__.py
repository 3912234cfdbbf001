from torchtrap.lsp import main

raise SystemExit(main())

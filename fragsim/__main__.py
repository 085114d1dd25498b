from fragsim.cli import main

raise SystemExit(main())

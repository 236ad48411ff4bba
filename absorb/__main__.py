from absorb.cli import main

raise SystemExit(main())

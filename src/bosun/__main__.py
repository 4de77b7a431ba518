from bosun.cli.main import main

raise SystemExit(main())

from bosun.launch import main

raise SystemExit(main())

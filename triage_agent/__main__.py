from triage_agent.cli import main

raise SystemExit(main())

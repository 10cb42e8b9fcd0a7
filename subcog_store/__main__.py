import sys

from subcog_store.cli.main import main

sys.exit(main())

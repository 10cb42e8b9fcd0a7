import sys

from subcog_store.cli.app import main

sys.exit(main())

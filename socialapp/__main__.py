import sys

from socialapp.cli import main

sys.exit(main())

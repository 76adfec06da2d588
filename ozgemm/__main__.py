import sys

from ozgemm.cli import main

sys.exit(main())

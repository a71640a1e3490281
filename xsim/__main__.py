import sys

from xsim.cli import main

sys.exit(main())

from albert_edge.cli import main
import sys
sys.exit(main())

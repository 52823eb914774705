"""Where each setting comes from: command-line options, the configuration file, login paths, the --mysql options, endpoints given with -H, --print-defaults."""

"""Entry point: options, the no-terminal check, start-up, and a clean exit on every path."""
from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Optional, Sequence

log = logging.getLogger("proxytop")


class Terminated(Exception):
    """SIGTERM or SIGHUP arrived: leave curses cleanly."""


def _on_signal(signum, _frame):
    raise Terminated(signal.Signals(signum).name)


def setup_logging(path: Optional[str]) -> None:
    # Never log to stderr: the screen is curses' (and npyscreen sizes itself from stderr).
    root = logging.getLogger()
    root.handlers[:] = []
    if path:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.DEBUG)
    else:
        root.addHandler(logging.NullHandler())


def build(config):
    """Engine, screens and controller for a configuration (no I/O happens here)."""
    from proxytop.collectors.base import HostSource
    from proxytop.collectors.proxysql import GlobalStatus
    from proxytop.connection import ProxySQLSource
    from proxytop.controller import Controller
    from proxytop.engine import Engine
    from proxytop.screens import all_screens

    engine = Engine()
    engine.add_source(ProxySQLSource(config.endpoint))
    engine.add_source(HostSource())
    engine.add_collector(GlobalStatus())
    screens = all_screens(config)
    for screen in screens:
        for source in screen.sources():
            engine.add_source(source)
        for collector in screen._collector_cache():
            engine.add_collector(collector)
    for screen in screens:
        screen.attach(engine)
    controller = Controller(engine, screens, config)
    return engine, controller


def main(argv: Optional[Sequence[str]] = None) -> int:
    from proxytop import options

    try:
        config = options.parse(argv, os.environ)
    except KeyboardInterrupt:
        return 130
    setup_logging(config.log_file)
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        print("proxytop: not a terminal: the live view needs one (run it in a terminal, e.g. over ssh -t)",
              file=sys.stderr)
        return 1

    engine, controller = build(config)
    from proxytop.app import MonitorApp

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    controller.activate()
    engine.start()
    code = 0
    try:
        MonitorApp(controller, use_color=config.color).run(fork=False)
    except (KeyboardInterrupt, Terminated) as exc:
        code = 130 if isinstance(exc, KeyboardInterrupt) else 143
    except Exception as exc:  # the terminal is restored by now: say what happened in one line
        log.exception("proxytop stopped on an unexpected error")
        text = " ".join(str(exc).split())
        hint = f" (details in {config.log_file})" if config.log_file else " (run with --log-file FILE for details)"
        print(f"proxytop: error: {exc.__class__.__name__}: {text}{hint}", file=sys.stderr)
        code = 1
    finally:
        engine.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())

"""Entry point: options, the no-terminal check, start-up, and a clean exit on every path."""
from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Optional, Sequence

from proxytop import options
from proxytop.collectors.nodes import attach_nodes
from proxytop.collectors.proxysql import GlobalStatus, HeaderStatus
from proxytop.config.settings_report import report
from proxytop.core import HostSource
from proxytop.polling import nodes
from proxytop.polling.connection import ProxySQLSource
from proxytop.polling.engine import Engine
from proxytop import __version__
from proxytop.recordings import daemon
from proxytop.recordings.recording import Recorder, RecordingError, RecordingWriter, recorded_options
from proxytop.recordings.replay import DEMO_FILE, RecordingIndex, ReplayControls, ReplayEngine, replay_config
from proxytop.recordings.replay_figures import RecordingScanner
from proxytop.screens import all_screens
from proxytop.ui.controller import Controller
from proxytop.ui.wakeup import Terminated, stop_exception

log = logging.getLogger("proxytop")


def _on_signal(signum, _frame):
    raise stop_exception(signum)


def setup_logging(path: Optional[str], level: int = logging.DEBUG) -> None:
    # Never log to stderr: the screen is curses' (and npyscreen sizes itself from stderr).
    root = logging.getLogger()
    for old in root.handlers:
        old.close()  # SIGHUP in --daemon: the file is opened again, where logrotate left it
    root.handlers[:] = []
    if path:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s"))
        root.addHandler(handler)
        root.setLevel(level)
    else:
        root.addHandler(logging.NullHandler())


def build(config, engine=None):
    """Engine, screens and controller for a configuration (no I/O happens here). ``engine``
    may be given instead of a live one (a replay)."""
    live = engine is None
    engine = engine if engine is not None else Engine()
    with_proxysql = getattr(config, "proxysql", True)  # False: only MySQL servers were named
    if live and with_proxysql:  # the watched node of one or several ProxySQL nodes
        source, node_set = nodes.make_source(config)
        engine.add_source(source)
        attach_nodes(engine, node_set, source)
    elif with_proxysql:
        engine.add_source(ProxySQLSource(config.endpoint))
    engine.add_source(HostSource())
    if with_proxysql:
        engine.add_collector(GlobalStatus())
        engine.add_collector(HeaderStatus())  # the header's rows of it, on screens that don't read it whole
    screens = all_screens(config)
    for screen in screens:
        for source in screen.sources():
            engine.add_source(source)
        for collector in screen.all_collectors():
            engine.add_collector(collector)
    for screen in screens:
        screen.attach(engine)
    controller = Controller(engine, screens, config)
    if engine.replaying:
        controller.overlay = ReplayControls(engine)  # its keys, and the header's line of where it is
    return engine, controller


def scan_for_graphs(controller, engine, config) -> None:
    """A replay's graphs and Trends cover the whole recording: scanned on a thread, by screens
    of its own on a replay engine of its own (built as this one was)."""
    controller.scanner = RecordingScanner(engine.index, lambda other: build(config, other)[1].screens, config)
    controller.scanner.request(["trends"])


def open_replay(config):
    """(replay engine, configuration for the screens) for --replay FILE or --demo."""
    args = config.args
    path = DEMO_FILE if getattr(args, "demo", False) else args.replay
    index = RecordingIndex(path)
    engine = ReplayEngine(index, speed=getattr(args, "speed", None) or 1.0, loop=bool(getattr(args, "demo", False)))
    return engine, replay_config(index, config, options.build_parser().parse_args([]))


def start_recording(config, engine):
    """--record FILE: a Recorder attached to the engine (None without --record)."""
    path = getattr(config.args, "record", None)
    if not path:
        return None

    writer = RecordingWriter(path, options=recorded_options(config.args), target=config.endpoint.label)
    return Recorder(engine, writer).attach()


def usage_error(message: str) -> int:
    sys.stderr.write(options.usage_line(message))
    return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        config = options.parse(argv, os.environ)
    except KeyboardInterrupt:
        return 130
    if getattr(config.args, "print_defaults", False):
        try:
            print(report(config, os.environ))
        except BrokenPipeError:  # `proxytop --print-defaults | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    args = config.args
    if getattr(args, "daemon", False):
        return run_daemon(config)
    setup_logging(config.log_file)
    batch = bool(getattr(args, "batch", False))
    replaying = bool(getattr(args, "replay", None) or getattr(args, "demo", False))
    if not batch and not (sys.stdout.isatty() and sys.stdin.isatty()):
        print("proxytop: not a terminal: the live view needs one (run it in a terminal, e.g. over ssh -t, "
              "or use --batch for plain text)", file=sys.stderr)
        return 1

    replay_engine = None
    if replaying:
        try:
            replay_engine, config = open_replay(config)
        except RecordingError as exc:
            print(f"proxytop: error: {exc}", file=sys.stderr)
            return 2
    engine, controller = build(config, replay_engine)
    if replaying and not batch:
        scan_for_graphs(controller, engine, config)
    try:
        recorder = start_recording(config, engine)
    except RecordingError as exc:
        print(f"proxytop: error: {exc}", file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    try:
        if batch:
            return run_batch(config, engine, controller)
        return run_interactive(config, engine, controller)
    finally:
        engine.stop()
        if recorder is not None:
            recorder.close()


def run_daemon(config) -> int:
    """--daemon: record into --record-dir until SIGTERM; nothing on stdout, a few lines on
    stderr (where it records, how much per hour), the rest in the log."""
    args = config.args
    directory = args.record_dir
    log_path = config.log_file or os.path.join(directory, "proxytop.log")
    try:
        os.makedirs(directory, exist_ok=True)
        setup_logging(log_path, logging.INFO)
    except OSError as exc:
        print(f"proxytop: error: cannot write the log {log_path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    triggers = tuple(args.on or ())
    engine, controller = build(config)
    screens = daemon.screens_to_record(controller.screens, args.screens, triggers)
    if not screens:
        print("proxytop: error: none of the screens to record has data sources here", file=sys.stderr)
        return 2
    recorded = {s.key for s in screens}
    for unread in [t for t in triggers if daemon.trigger_screen(t) and daemon.trigger_screen(t) not in recorded]:
        line = f"trigger {unread.text}: its figure is read by the {daemon.trigger_screen(unread)} screen, " \
               "which has nothing to read here: it can't fire"
        log.warning("%s", line)
        print(f"proxytop: {line}", file=sys.stderr)
    keeper = daemon.DetailKeeper()
    try:
        writer = daemon.RotatingWriter(directory, options=recorded_options(args), target=config.endpoint.label,
                                       retention=args.retention, retention_size=args.retention_size, keeper=keeper)
    except RecordingError as exc:
        print(f"proxytop: error: {exc}", file=sys.stderr)
        return 2
    recorder = Recorder(engine, writer).attach()
    loop = daemon.Daemon(engine, controller, screens, writer, triggers, interval=config.delay, keeper=keeper)
    loop.reopen = lambda: setup_logging(log_path, logging.INFO)
    signal.signal(signal.SIGTERM, lambda *_: loop.stop.set())
    signal.signal(signal.SIGINT, lambda *_: loop.stop.set())
    signal.signal(signal.SIGHUP, lambda *_: loop.reopen_log.set())
    names = ",".join(s.key for s in screens)
    said = (f"recording {names} every {config.delay:g} s into {directory}"
            + (f", triggers {' '.join(t.text for t in triggers)}" if triggers else "") + f"; log in {log_path}")
    log.info("%s (proxytop %s, pid %d)", said, __version__, os.getpid())
    print(f"proxytop: {said}; the MB per hour follow after the first minute", file=sys.stderr, flush=True)

    def measured(mb_per_hour: float) -> None:
        line = f"recording about {mb_per_hour:.1f} MB per hour (measured over the first minute)"
        log.info("%s", line)
        print(f"proxytop: {line}", file=sys.stderr, flush=True)

    try:
        return loop.run(measured)
    finally:
        engine.stop()
        recorder.close()
        log.info("stopped: %d marks, %d records lost to failed writes", loop.marks, writer.lost)


def run_batch(config, engine, controller) -> int:
    from proxytop.ui import batch  # lazy: rich, which the live view does without

    try:
        return batch.main(config, engine, controller)
    except batch.UsageError as exc:
        return usage_error(str(exc))
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 143
    except BrokenPipeError:
        # `proxytop --batch | head`: the reader left; exit quietly, as other tools do.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 0


def run_interactive(config, engine, controller) -> int:
    from proxytop.ui.app import MonitorApp, terminal_problem  # lazy: npyscreen and curses, which --batch does without

    problem = terminal_problem()
    if problem:
        print(f"proxytop: error: {problem}", file=sys.stderr)
        return 1
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
    return code


if __name__ == "__main__":
    sys.exit(main())

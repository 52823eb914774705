from setuptools import setup

from pathlib import Path
import re

HERE = Path(__file__).parent
VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "proxytop" / "__init__.py").read_text()).group(1)

setup(
    name="proxytop",
    version=VERSION,
    description="A top-like terminal monitor for ProxySQL and the MySQL servers behind it",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="GPL-3.0-or-later",
    python_requires=">=3.9",
    # screens/ and collectors/ live at the top of the repository but install inside the
    # proxytop package, so nothing generic lands in site-packages.
    packages=["proxytop", "proxytop.screens", "proxytop.collectors",
              "proxytop.metrics", "proxytop.polling", "proxytop.config", "proxytop.ui", "proxytop.recordings"],
    package_dir={
        "proxytop": "proxytop",
        "proxytop.screens": "screens",
        "proxytop.collectors": "collectors",
    },
    package_data={"proxytop": ["data/*"]},
    install_requires=[
        "npyscreen>=5.0.4,<5.1",  # the one release tested; its newest
        "PyMySQL>=1.2,<1.3",  # tested at both ends (tests/run); 1.2 refuses a REQUIRED TLS connection to a server without TLS before logging in
        "psutil>=5.8",
        "rich>=12",
        "myloginpath>=0.0.4",  # reads mysql_config_editor's ~/.mylogin.cnf (--login-path)
    ],
    extras_require={
        "test": ["pytest>=7", "pyte>=0.8", "hypothesis>=6", "cryptography>=3.4",
                 # checks the layers (.importlinter); its releases with acyclic_siblings need 3.11
                 "import-linter>=2.17,<3; python_version>='3.11'", "pyflakes>=3"],
    },
    entry_points={"console_scripts": ["proxytop = proxytop.cli:main"]},
    classifiers=[
        "Environment :: Console :: Curses",
        "Programming Language :: Python :: 3",
        "Topic :: Database",
        "Topic :: System :: Monitoring",
    ],
)

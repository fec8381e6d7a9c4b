"""Logging configuration for Kafka's JVMs: log4j2 for Kafka 4.x, reload4j for 3.9.x.

Nodes log to stdout, which failsafe sends to one file per process; tools log warnings to stderr.
"""

from __future__ import annotations

from pathlib import Path

LOGGING_CONFIG_LOG4J2 = "log4j2.properties"
LOGGING_CONFIG_LOG4J = "log4j.properties"
TOOLS_LOGGING_CONFIG_LOG4J2 = "tools-log4j2.properties"
TOOLS_LOGGING_CONFIG_LOG4J = "tools-log4j.properties"

_LOG4J2_NODE = """\
# Logging of failsafe's Kafka nodes: everything to stdout, which failsafe sends to logs/server-N.log.
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

_LOG4J2_TOOLS = """\
# Logging of Kafka's tools run through 'failsafe kafka': warnings and errors to stderr.
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""

_LOG4J_NODE = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
"""

_LOG4J_TOOLS = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

LOGGING_FILES = {
    LOGGING_CONFIG_LOG4J2: _LOG4J2_NODE,
    TOOLS_LOGGING_CONFIG_LOG4J2: _LOG4J2_TOOLS,
    LOGGING_CONFIG_LOG4J: _LOG4J_NODE,
    TOOLS_LOGGING_CONFIG_LOG4J: _LOG4J_TOOLS,
}


def logging_jvm_option(config_dir: Path, log4j2: bool, tools: bool) -> str:
    """The -D option pointing Kafka's logging at our file (log4j2 for 4.x, reload4j for 3.9)."""
    if log4j2:
        name = TOOLS_LOGGING_CONFIG_LOG4J2 if tools else LOGGING_CONFIG_LOG4J2
        return f"-Dlog4j2.configurationFile={config_dir / name}"
    name = TOOLS_LOGGING_CONFIG_LOG4J if tools else LOGGING_CONFIG_LOG4J
    return f"-Dlog4j.configuration=file:{config_dir / name}"


def write_logging_configs(config_dir: Path) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    for name, text in LOGGING_FILES.items():
        (config_dir / name).write_text(text)

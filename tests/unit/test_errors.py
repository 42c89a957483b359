import inspect

import pytest

from kmigrate import errors
from kmigrate.errors import KMigrateError

ERROR_CLASSES = [
    obj
    for _, obj in inspect.getmembers(errors, inspect.isclass)
    if issubclass(obj, KMigrateError) and obj.__module__ == errors.__name__
]

EXPECTED = {
    "KMigrateError": ("error", 1),
    "ConfigError": ("config", 2),
    "UnknownClusterError": ("unknown-cluster", 2),
    "ClusterError": ("cluster", 3),
    "ClusterUnavailableError": ("unavailable", 3),
    "ClusterUnreachableError": ("unreachable", 3),
    "OutageTooLongError": ("outage", 3),
    "RegistryRefusedError": ("schema-registry", 3),
    "AuthenticationError": ("authentication", 3),
    "AuthorizationError": ("authorization", 3),
    "NotFoundError": ("not-found", 4),
    "TopicNotFoundError": ("topic-not-found", 4),
    "GroupNotFoundError": ("group-not-found", 4),
    "ConflictError": ("conflict", 5),
    "TopicExistsError": ("topic-exists", 5),
    "GroupActiveError": ("group-active", 5),
    "NotTranslatableError": ("not-translatable", 5),
    "GroupMovedOnError": ("group-moved-on", 5),
    "KafkaOperationError": ("kafka", 6),
    "CommandFailedError": ("command-failed", 6),
    "SandboxError": ("sandbox", 7),
    "JarsUnavailableError": ("jars", 7),
    "BrokerStartError": ("broker-start", 7),
    "StoreError": ("store", 8),
    "MirrorError": ("mirror", 9),
    "ForeignWriteError": ("foreign-write", 9),
    "DataLossError": ("data-loss", 9),
    "MirrorRunningError": ("mirror-running", 9),
}


def test_all_documented_error_classes_exist():
    assert {cls.__name__ for cls in ERROR_CLASSES} == set(EXPECTED)


def test_every_error_class_has_a_distinct_code():
    codes = [cls.code for cls in ERROR_CLASSES]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_has_a_non_zero_exit_code(cls):
    assert isinstance(cls.exit_code, int)
    assert cls.exit_code != 0


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_code_and_exit_code_match_the_documented_table(cls):
    assert (cls.code, cls.exit_code) == EXPECTED[cls.__name__]


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_subclasses_share_their_family_exit_code(cls):
    family = next(
        base for base in cls.__mro__ if base.__bases__ == (KMigrateError,) or base is KMigrateError
    )
    assert cls.exit_code == family.exit_code


def test_str_is_the_message_and_detail_is_kept():
    error = errors.BrokerStartError("broker 1 did not start", detail="line1\nline2")
    assert str(error) == "broker 1 did not start"
    assert error.message == "broker 1 did not start"
    assert error.detail == "line1\nline2"
    assert isinstance(error, errors.SandboxError)


def test_detail_defaults_to_none():
    assert errors.ConfigError("x").detail is None


def test_unknown_cluster_error_is_a_config_error():
    assert issubclass(errors.UnknownClusterError, errors.ConfigError)

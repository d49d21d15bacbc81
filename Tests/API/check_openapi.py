#!/usr/bin/env python3
"""Checks the API document as every reader will read it: no mapping with a key twice (PyYAML,
like most readers, would silently keep the last and lose the operations before it), then valid
OpenAPI 3.1 by openapi-spec-validator. Run by `make api-check`; exits non-zero with the line of
each duplicate or the validator's error.

Usage: check_openapi.py [Sources/TrackMeServer/openapi.yaml]
"""
import sys

import yaml
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename


class DuplicateKey(Exception):
    pass


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with a key twice, naming both lines."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKey(f"line {line}: key {key!r} already at line {seen[key]}")
            seen[key] = line
        return super().construct_mapping(node, deep)


def duplicate_keys(text):
    """The duplicate found, or None."""
    try:
        yaml.load(text, Loader=UniqueKeyLoader)
    except DuplicateKey as error:
        return str(error)
    return None


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "Sources/TrackMeServer/openapi.yaml"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    duplicate = duplicate_keys(text)
    if duplicate:
        print(f"{path}: duplicate key, {duplicate}")
        return 1
    # The check itself must be able to fail.
    assert duplicate_keys("a: 1\na: 2\n") is not None
    spec, _ = read_from_filename(path)
    validate(spec)
    print(f"{path}: no duplicate keys; valid OpenAPI {spec.get('openapi')} ({len(spec.get('paths', {}))} paths)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

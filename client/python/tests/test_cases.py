"""The shared case table against the real broker: the Python client gives the table's results."""

import secrets
import unittest

from mortarmq_mq9 import Mq9Client

from .broker import broker
from .cases import load_table, project_onto, run_table


class SharedCaseTable(unittest.TestCase):
    def test_every_case_gives_the_tables_results(self) -> None:
        url, token = broker()
        made = {
            "default": Mq9Client(url, token=token),
            "bad_token": Mq9Client(url, token="not-a-token"),
            "unreachable": Mq9Client("http://127.0.0.1:1", token=token),
        }
        table = load_table()
        results = run_table(table, lambda kind: made[kind], f"py{secrets.token_hex(3)}")
        for case in table["cases"]:
            with self.subTest(case=case["name"]):
                got = [project_onto(r, s["expect"]) for r, s in zip(results[case["name"]], case["steps"])]
                self.assertEqual(got, [s["expect"] for s in case["steps"]])

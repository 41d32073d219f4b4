"""The command-line stack: tables of per-sample columns (:mod:`.io`, :mod:`.tables`), the
metric table (:mod:`.evaluate`), rule files (:mod:`.rules`), the HTML report
(:mod:`.report`), the ``abstain`` command (:mod:`.cli`) and the demo (:mod:`.demo`).

It calls the public API of the library only.
"""

"""Exports: tcplab's results in the formats other tools open.

``pcap`` (H-pcap): a flow's packets as a pcap file (:mod:`tcplab.exports.pcap`), written by
``tcplab run --pcap FLOW`` and ``tcplab export pcap RUN --flow FLOW``
(:mod:`tcplab.exports.pcap_cli`).
"""

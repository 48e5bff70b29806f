"""The scenario on the running Linux kernel, in network namespaces (``tcplab kernel run``)."""

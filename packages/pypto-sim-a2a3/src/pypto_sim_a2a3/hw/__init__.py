"""The hardware model: cores and their memory, the cost of each op, the pipes inside a core,
the rings between cores, barriers and events. What a modeled cycle is made of.
"""

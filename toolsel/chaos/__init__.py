"""``toolsel chaos``: faults and load against a stack of its own (hostile input on every subject, a learner
SIGKILLed mid-stream, a NATS restart under selection, two tenants, forged broadcasts), each measured."""

def f(a):
	x = a
	if x:
		x = a
		x = a
	return x


def g():
	pass

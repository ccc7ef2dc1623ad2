def count(words):
    seen = {}
    for w in words:
        if w in seen:
            seen[w] += 1
        else:
            seen[w] = 1
    return seen

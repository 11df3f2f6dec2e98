"""teg.trace"""

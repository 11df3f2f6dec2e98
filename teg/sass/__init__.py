"""teg.sass"""

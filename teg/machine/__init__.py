"""teg.machine"""

"""teg.engine"""

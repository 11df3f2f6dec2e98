"""teg.report"""

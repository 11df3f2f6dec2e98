"""teg.analysis"""
